"""The live check: relaunch vLLM with the advised change and confirm it, round by round."""
