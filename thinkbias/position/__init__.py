"""thinkbias: position."""
