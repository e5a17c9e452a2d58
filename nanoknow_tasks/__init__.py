"""NanoKnow lm-eval tasks (YAML configs in this folder), prompts, metrics and loaders."""
