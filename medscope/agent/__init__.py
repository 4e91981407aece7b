"""The agent protocol: prompts, tools, the action format, answer matching, the episode loop."""
