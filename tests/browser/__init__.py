"""Real-browser end-to-end tests: JupyterLab driven by headless Chromium."""
