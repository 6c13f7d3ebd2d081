"""The engine answer's prompt ids parsed straight into an array: same answer as a plain parse."""

from __future__ import annotations

import json
import random
from array import array

import orjson
import pytest

from training.engines.answer_parse import loads_chat_answer, parse_int_list


def vllm_answer(prompt_ids: list[int], content: str = "done") -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop", "token_ids": [5, 6],
                         "logprobs": {"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -1.5}]}}],
            "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": 2},
            "prompt_token_ids": prompt_ids}


def same_as_plain(content: bytes) -> dict:
    fast, plain = loads_chat_answer(content), orjson.loads(content)
    ids = fast.get("prompt_token_ids")
    assert {k: v for k, v in fast.items() if k != "prompt_token_ids"} == \
        {k: v for k, v in plain.items() if k != "prompt_token_ids"}
    assert (list(ids) if isinstance(ids, array) else ids) == plain.get("prompt_token_ids")
    return fast


@pytest.mark.parametrize("dumps", [orjson.dumps, lambda o: orjson.dumps(o, option=orjson.OPT_INDENT_2)])
def test_long_prompt_ids_come_as_an_array_equal_to_the_plain_parse(dumps) -> None:
    ids = [random.Random(3).randrange(0, 151_000) for _ in range(60_000)]
    out = same_as_plain(dumps(vllm_answer(ids)))
    assert isinstance(out["prompt_token_ids"], array) and out["prompt_token_ids"].typecode == "q"


def test_the_key_written_by_the_model_is_not_taken_for_the_answers_own() -> None:
    """A reply that quotes the key (escaped inside a JSON string) and a nested object that has
    the key: neither is cut out as the answer's prompt ids."""
    quoted = vllm_answer([1, 2, 3], content='{"prompt_token_ids":[9,9,9]} and "prompt_token_ids": [8]')
    out = same_as_plain(orjson.dumps(quoted))
    assert list(out["prompt_token_ids"]) == [1, 2, 3]
    nested = vllm_answer([1, 2, 3])
    nested["choices"][0]["extra"] = {"prompt_token_ids": [7, 7]}
    out = same_as_plain(orjson.dumps(nested))
    assert list(out["prompt_token_ids"]) == [1, 2, 3] and out["choices"][0]["extra"]["prompt_token_ids"] == [7, 7]
    only_nested = {"choices": [{"prompt_token_ids": [4, 5]}]}
    assert same_as_plain(orjson.dumps(only_nested)) == only_nested


@pytest.mark.parametrize("ids", [[], [2**70, 1], [1.5, 2], [True, 1], [None, 1], ["1", 2], [-(2**63), 5]])
def test_what_is_not_a_list_of_64_bit_ints_is_left_as_the_plain_parse_gives_it(ids: list) -> None:
    same_as_plain(json.dumps(vllm_answer(ids)).encode())


def test_no_prompt_ids_and_bad_json() -> None:
    plain = {"choices": [{"message": {"content": "x"}}]}
    assert loads_chat_answer(orjson.dumps(plain)) == plain
    with pytest.raises(orjson.JSONDecodeError):
        loads_chat_answer(b'{"prompt_token_ids":[1,2,3], "choices": [')


@pytest.mark.parametrize("span, expected", [
    (b"1,2,3", [1, 2, 3]), (b" 1 ,\n 2", [1, 2]), (b"-3,0", [-3, 0]),
    (b"", None), (b"1,,2", None), (b"1,2,", None), (b"+1,2", None), (b"1e3,2", None), (b"1.0,2", None),
    (b"1,x", None), (str(2**63).encode() + b",1", None), (str(-(2**63)).encode() + b",1", None),
])
def test_parse_int_list(span: bytes, expected: list[int] | None) -> None:
    out = parse_int_list(span)
    assert (None if out is None else list(out)) == expected
