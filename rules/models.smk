# Model weights that are not in the manifest: pinned snapshots from the hub, AWQ quantization.
