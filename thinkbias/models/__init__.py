"""Model weights that come from the hub: pinned snapshots, checksums, quantization."""
