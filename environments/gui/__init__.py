"""Helpers shared by the GUI harnesses (computer-use, browser-use): screenshot
observations as OpenAI image content parts, screenshots saved as PNGs in the rollout's logs
(``observation``), and process-tree memory for the sandbox probes (``procmem``)."""
