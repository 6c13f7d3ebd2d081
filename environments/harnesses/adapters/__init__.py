"""One module per harness adapter; :mod:`environments.harnesses.registry` collects them."""
