"""A call the engine aborts (vLLM's finish reason ``abort``: veRL's asynchronous trainer aborts
every in-flight request at a weight sync) reaches the harness as a retryable 503 with
Retry-After, is recorded as an error call (no sample), and the harness's retry is served."""

from __future__ import annotations

import anthropic
import openai
import pytest

from testkit.fakes.vllm import FakeReply, FakeVLLM
from training.proxy.client import ProxyAdminClient
from training.proxy.routes.model_call import ABORTED_MESSAGE

MSGS = [{"role": "user", "content": "hi"}]


async def test_an_aborted_call_is_retried_by_the_client_and_only_the_retry_is_a_sample(
        fake_vllm: FakeVLLM, admin: ProxyAdminClient) -> None:
    reg = await admin.register(task_id="t", group_id="g", run_id="r")
    fake_vllm.script(FakeReply.text("cut sh", finish_reason="abort"), FakeReply.text("the whole answer"))
    oa = openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=1)
    out = await oa.chat.completions.create(model="m", messages=MSGS)
    assert out.choices[0].message.content == "the whole answer"
    calls = await admin.calls(reg.rollout_id)
    assert [(c["status"], c["error"]) for c in calls] == [("error", ABORTED_MESSAGE), ("ok", None)]
    assert calls[1]["response_token_ids"]


@pytest.mark.parametrize("api", ["chat", "messages"])
async def test_the_abort_is_a_503_with_retry_after_in_the_callers_format(
        fake_vllm: FakeVLLM, admin: ProxyAdminClient, api: str) -> None:
    reg = await admin.register()
    fake_vllm.script(FakeReply.text("cut", finish_reason="abort"))
    if api == "chat":
        with pytest.raises(openai.InternalServerError) as err:
            await openai.AsyncOpenAI(base_url=reg.base_url, api_key="x", max_retries=0).chat.completions.create(
                model="m", messages=MSGS)
        assert err.value.body["code"] == "engine_paused"
    else:
        with pytest.raises(anthropic.InternalServerError) as err:
            await anthropic.AsyncAnthropic(base_url=reg.anthropic_base_url, api_key="x", max_retries=0).messages.create(
                model="m", max_tokens=8, messages=MSGS)
        assert err.value.body["error"]["message"] == ABORTED_MESSAGE
    assert err.value.status_code == 503 and err.value.response.headers["retry-after"] == "1"
    rollout = await admin.get(reg.rollout_id)
    assert rollout["status"] not in ("infra_error",)  # an abort is not the rollout's failure
