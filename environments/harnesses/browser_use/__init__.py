"""The browser-use harness: a screenshot-in, JSON-action-out browser agent over OpenAI chat
(``python -m environments.harnesses.browser_use``, launched by the ``browser-use`` adapter)."""
