"""References to project text resolved at send time: a directive's anchor and
references, and the ``@`` mentions of a chat request (files, symbols' regions,
directives, turns), read through one confined, capped reader."""
