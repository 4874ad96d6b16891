"""The vLLM release extractor, one job per module; the command is scripts/extract_vllm_release.py."""
