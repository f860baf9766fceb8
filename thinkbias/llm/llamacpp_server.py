"""``python -m thinkbias.llm.llamacpp_server ARGS``: llama-cpp-python's OpenAI-compatible server
(``python -m llama_cpp.server ARGS``) with the CPU backend for this CPU loaded first
(``thinkbias.llm.llamacpp_backends``), as every llama.cpp entry point of the project does."""

from __future__ import annotations

from thinkbias.llm.llamacpp_backends import load_cpu_backends

if __name__ == "__main__":
    load_cpu_backends()
    from llama_cpp.server.__main__ import main

    main()
