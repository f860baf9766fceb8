# Raw data and model weights: fetched through the manifest, checksummed, written atomically.
