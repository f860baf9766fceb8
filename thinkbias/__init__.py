"""thinkbias: thinkbias."""
