"""lm-eval model ``nanochat``: native nanochat checkpoints, batched KV-cache generation."""
