"""Single-tool lookup families: one search, one answer, graded checks (partial credit).

The main job's family (``openforge pipeline --preset local``): a task a small policy solves
*sometimes*, so GRPO groups have reward variance from the first step. The agent is offered
one tool (``contacts_search``) and asked for one attribute of one person; the verifier gives
partial credit — 0.2 for calling the tool successfully, 0.2 more when the query names the
person, 0.1 for a final reply about that person (it names them), 0.5 for a reply holding the
right value and no wrong one (none of the person's other attributes, no one else's value) —
so "right tool, well-formed call, right answer" are rungs a policy can climb one at a time,
and a base policy that never calls a tool still earns the small one sometimes. Both reply
rungs need a reply, not the search result echoed back (no JSON object, no
``<tool_response>`` block: :data:`TOOL_OUTPUT_MARKERS`): an echo scores the two call rungs
only, below any attempt at an answer. The no-op agent scores 0
(no call, no reply) and the oracle 1. Difficulty adds contacts and a decoy who shares the
person's first name.
"""

from __future__ import annotations

import random

from environments.family_registry import Difficulty
from synthesis.procedural import fixtures as fx
from synthesis.procedural.families import _SCALE, family
from synthesis.procedural.spec import ProceduralTask, Step

#: The attributes a lookup asks for, with how the instruction names them.
ATTRIBUTES = {"phone": "phone number", "email": "email address", "company": "company", "title": "job title"}
TITLES = ["Account Manager", "Engineer", "Designer", "Recruiter", "Controller", "Buyer", "Analyst", "Paralegal"]
TEMPLATES = (
    "What is {name}'s {attr}? Look it up in my contacts and reply with it.",
    "Find {name} in the address book and tell me their {attr}.",
    "I need the {attr} of {name}. Search my contacts and answer with it.",
)
#: Check weights: right tool, well-formed call for the right person, right answer.
WEIGHTS = {"searched": 0.2, "searched_for_person": 0.2, "names_person": 0.1, "right_answer": 0.5}
#: What the tool's output holds and a reply in words does not: the start of a JSON object and
#: the chat template's tool-result tag. GRPO on the 135M policy learnt to echo the search
#: result as its reply (cut at the per-call token cap); a cut echo can hold the right value
#: and none of the wrong ones, so excluding wrong values alone still gave it full credit in
#: 23 of 96 held-out replies of one main-job run (docs/training-loop.md, session 15).
TOOL_OUTPUT_MARKERS = ['{"', "<tool_response>"]


def _phone(rng: random.Random) -> str:
    return f"{rng.randrange(200, 999)}-555-{rng.randrange(1000, 9999)}"


def _contact(rng: random.Random, person: fx.Person, index: int) -> dict:
    return {"id": f"c-{index:04d}", "name": person.name, "email": person.email, "phone": _phone(rng),
            "company": person.company, "title": rng.choice(TITLES), "notes": ""}


def _wrong_values(contacts: list[dict], target: dict, attr: str) -> list[str]:
    """What a precise answer does not hold: the person's other attributes and the asked
    attribute of everyone else (where it differs from the answer). A reply that dumps the
    search result (the record, or several) names the right value too; without this check
    it earned full credit, and GRPO on the 135M policy learnt to echo the tool output into
    every reply in one of three main-job runs (docs/training-loop.md, session 14)."""
    value = str(target[attr])
    wrong = {str(target[a]) for a in ATTRIBUTES if a != attr}
    wrong |= {str(c[attr]) for c in contacts if c is not target}
    return sorted(w for w in wrong if w and w.casefold() not in value.casefold() and value.casefold() not in w.casefold())


@family("contact-lookup", ["contacts"])
def contact_lookup(rng: random.Random, difficulty: Difficulty) -> ProceduralTask:
    folks = fx.people(rng, 3 + 2 * _SCALE[difficulty], companies=4)
    contacts = [_contact(rng, p, i + 1) for i, p in enumerate(folks)]
    target = rng.choice(contacts)
    person = next(p for p in folks if p.name == target["name"])
    if difficulty == "hard":  # a decoy with the same first name
        decoy = fx.Person(person.first, rng.choice([n for n in fx.LAST if n != person.last]), person.company, "decoy.test")
        contacts.append(_contact(rng, decoy, len(contacts) + 1))
    rng.shuffle(contacts)
    attr = rng.choice(sorted(ATTRIBUTES))
    value = str(target[attr])
    instruction = rng.choice(TEMPLATES).format(name=person.name, attr=ATTRIBUTES[attr])
    search = {"kind": {"eq": "call"}, "tool": {"eq": "contacts_search"}, "ok": {"eq": True}}
    checks = [
        {"name": "searched", "kind": "audit", "service": "contacts", "where": search, "min": 1,
         "weight": WEIGHTS["searched"]},
        {"name": "searched_for_person", "kind": "audit", "service": "contacts",
         "where": {**search, "args.query": {"contains": person.last}}, "min": 1, "weight": WEIGHTS["searched_for_person"]},
        {"name": "names_person", "kind": "answer", "contains": [person.last], "excludes": TOOL_OUTPUT_MARKERS,
         "weight": WEIGHTS["names_person"]},
        {"name": "right_answer", "kind": "answer", "contains": [value],
         "excludes": [*_wrong_values(contacts, target, attr), *TOOL_OUTPUT_MARKERS], "weight": WEIGHTS["right_answer"]},
    ]
    return ProceduralTask(
        family="", seed=0, difficulty="easy", category="lookup", title=f"Look up {person.name}'s {ATTRIBUTES[attr]}",
        instruction=instruction, services=["contacts"], fixtures={"contacts": {"contacts": contacts}},
        solution=[Step.call("contacts_search", query=person.name),
                  Step.reply(f"{person.name}'s {ATTRIBUTES[attr]} is {value}.")],
        checks=checks, keywords=["contacts", "lookup", attr], tools=["contacts_search"], scoring="weighted",
    )
