"""LLM judges behind OpenAI-compatible servers."""
