"""thinkbias: llm."""
