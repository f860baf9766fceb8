"""thinkbias: blindspot."""
