"""``computer-use``: a screenshot-only desktop agent (Kimi-Agent-style). Each step takes a
screenshot, asks the model through the proxy (OpenAI chat, the image as an ``image_url``
part), and runs the tool calls it returns (``computer``, ``bash``, ``str_replace_editor``)
until ``terminate`` or the step cap. ``--replay actions.json`` runs a task's oracle plan
through the same desktop and tools instead of a model."""
