"""thinkbias.data: raw files and the tables built from them.

manifest   the source manifest (resources/manifest.yaml): files, sha256, ordered sources
fetch      fetch a manifest file: sources in order, sha256 verified, atomic write
checksums  sha256 of files, remembered by stat in a sidecar (hashed once, re-hashed when changed)
verify     manifest files checked against their sha256 where they are read
loaders    raw files -> tidy tables (Adult, COMPAS, Credit, MMLU/ARC/GPQA)
sampling   seeded, machine-independent row sampling and sub-seeds
"""
