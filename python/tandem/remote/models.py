"""The models of what crosses the remote boundary, by their domain name.

They are defined in `tandem.protocol.remote` (Emacs sees them too, and the
protocol names no domain type); the remote package imports them from here.
"""

from tandem.protocol.remote import ConversationCreated, LlmSettings, RemoteTarget, UploadResult

__all__ = ["ConversationCreated", "LlmSettings", "RemoteTarget", "UploadResult"]
