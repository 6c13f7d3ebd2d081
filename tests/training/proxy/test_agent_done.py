"""Token revocation at agent_done (issue 14): model calls after it are refused and counted;
the runner's finish report still goes in; other rollouts' tokens are unaffected."""

from __future__ import annotations

import httpx

from environments.runner.finish import FINISH_KEY_HEADER
from training.proxy.client import ProxyAdminClient, Registration
from training.proxy.server import ProxyServer

CHAT = {"model": "policy", "messages": [{"role": "user", "content": "hi"}]}


async def test_agent_done_revokes_model_calls_but_not_the_finish(proxy: ProxyServer, admin: ProxyAdminClient,
                                                                rollout: Registration) -> None:
    other = await admin.register(task_id="task-2")
    auth = {"authorization": f"Bearer {rollout.token}"}
    async with httpx.AsyncClient(base_url=proxy.url, timeout=10) as http:
        assert (await http.post(f"/rollouts/{rollout.token}/v1/chat/completions", json=CHAT)).status_code == 200
        done = await http.post(f"/rollouts/{rollout.token}/agent-done", json={}, headers=auth)
        assert done.status_code == 200 and done.json()["model_calls"] == "revoked"
        for path in (f"/rollouts/{rollout.token}/v1/chat/completions", "/v1/chat/completions"):
            refused = await http.post(path, json=CHAT, headers=auth)
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "token_revoked"
        # another rollout's token still works, and this one cannot revoke it by path
        assert (await http.post(f"/rollouts/{other.token}/v1/chat/completions", json=CHAT)).status_code == 200
        # the token alone (all an agent holds) cannot finish the rollout: the runner's finish key can
        forged = await http.post(f"/rollouts/{rollout.token}/finish", json={"status": "ok", "reward": 1.0}, headers=auth)
        assert forged.status_code == 403 and forged.json()["error"]["code"] == "finish_key_required"
        wrong = await http.post(f"/rollouts/{rollout.token}/finish", json={"status": "ok", "reward": 1.0},
                                headers={**auth, FINISH_KEY_HEADER: other.finish_key})
        assert wrong.status_code == 403
        fin = await http.post(f"/rollouts/{rollout.token}/finish", json={"status": "ok", "reward": 0.0},
                              headers={**auth, FINISH_KEY_HEADER: rollout.finish_key})
        assert fin.status_code == 200
    row = await admin.get(rollout.rollout_id)
    assert row["n_calls"] == 1 and row["reward"] == 0.0
    assert row["metadata"]["refused_after_agent_done"] == 2 and "agent_done_at" in row["metadata"]
