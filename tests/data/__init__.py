"""Tests of thinkbias.data (a package, so module names never collide with other test folders)."""
