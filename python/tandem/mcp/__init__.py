"""The user's MCP servers: settings → client sessions → tools for turns and ACP agents."""
