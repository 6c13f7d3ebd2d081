"""The proxy's HTTP routes, one module a concern; :func:`training.proxy.app.create_app` assembles them.

- ``model_call``: the pipeline every model call takes (token → body → chat → budget → engine
  → record → answer), whatever the wire API; ``chat``, ``responses``, ``messages``: the three
  wire APIs it serves (translation in and out, and each API's extra routes); ``models``: the
  model list all three ask for.
- ``admin``: the orchestrator's rollout API (admin key); ``runner``: what the in-sandbox
  runner calls with the rollout token (finish, agent-done, engine time); ``health``.
- ``context``: the one record the routes share (engine, recorder, limits); ``body``: reading
  and bounding request bodies; ``finish``: finishing a rollout and the runner's finish key.
"""
