"""The ``crm`` mock service: accounts, deals and logged activities."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from environments.claw.core import (
    Args, Collection, Email, IsoDate, IsoTime, ServiceSpec, Store, bad_request, joined, rank,
)

Stage = Literal["lead", "qualified", "proposal", "negotiation", "won", "lost"]
ActivityType = Literal["note", "call", "meeting", "email", "task"]

SPEC = ServiceSpec(
    "crm",
    "A CRM: search accounts, read their deals and activity history, update deals, log activities.",
    {
        "accounts": Collection(
            prefix="ACC",
            defaults={"name": "", "industry": "", "owner": "", "domain": "", "notes": ""},
            required=("name",),
        ),
        "deals": Collection(
            prefix="D",
            defaults={"account_id": None, "name": "", "stage": "lead", "amount": 0.0, "close_date": None},
            required=("account_id", "name"),
        ),
        "activities": Collection(
            prefix="A",
            defaults={"account_id": None, "type": "note", "subject": "", "body": "", "contact_email": None, "date": None},
            required=("account_id", "subject"),
        ),
    },
)


class SearchArgs(Args):
    query: str = Field(description="Account name, email domain, industry or keyword.", min_length=1)
    limit: int = Field(20, ge=1, le=100, description="Maximum number of results.")


@SPEC.action("search_accounts", SearchArgs, "Find accounts by name, domain (e.g. client.test), industry or keyword.")
def search_accounts(store: Store, a: SearchArgs) -> dict:
    found = rank(a.query, store.items("accounts"), lambda x: joined(x, "id", "name", "industry", "owner", "domain", "notes"))
    return {"accounts": [dict(x) for x in found[: a.limit]]}


class GetArgs(Args):
    id: str = Field(description="Account id, e.g. ACC-7.")


@SPEC.action("get_account", GetArgs, "Get an account with its deals and activities.")
def get_account(store: Store, a: GetArgs) -> dict:
    account = dict(store.get("accounts", a.id, "account"))
    deals = [dict(d) for d in store.items("deals") if d.get("account_id") == a.id]
    acts = [dict(x) for x in store.items("activities") if x.get("account_id") == a.id]
    return {"account": account, "deals": deals, "activities": acts}


class DealsArgs(Args):
    account_id: str | None = Field(None, description="Only deals of this account.")
    stage: Stage | None = Field(None, description="Only deals in this stage.")


@SPEC.action("list_deals", DealsArgs, "List deals, optionally by account and stage.")
def list_deals(store: Store, a: DealsArgs) -> dict:
    deals = store.items("deals")
    if a.account_id:
        store.get("accounts", a.account_id, "account")
        deals = [d for d in deals if d.get("account_id") == a.account_id]
    if a.stage:
        deals = [d for d in deals if d.get("stage") == a.stage]
    return {"deals": [dict(d) for d in deals]}


class UpdateDealArgs(Args):
    id: str = Field(description="Deal id.")
    stage: Stage | None = Field(None, description="New stage.")
    amount: float | None = Field(None, ge=0, description="New amount.")
    close_date: IsoDate | None = Field(None, description="New expected close date, YYYY-MM-DD.")


@SPEC.action("update_deal", UpdateDealArgs, "Change a deal's stage, amount or close date.")
def update_deal(store: Store, a: UpdateDealArgs) -> dict:
    store.get("deals", a.id, "deal")
    patch = a.model_dump(exclude={"id"}, exclude_none=True)
    if not patch:
        raise bad_request("crm_update_deal: give at least one of stage, amount, close_date")
    return {"deal": store.update("deals", a.id, patch)}


class LogArgs(Args):
    account_id: str = Field(description="Account id the activity belongs to.")
    type: ActivityType = Field(description="Kind of activity.")
    subject: str = Field(description="Short subject.", min_length=1)
    body: str = Field("", description="Details.")
    contact_email: Email | None = Field(None, description="The contact involved, if any.")
    date: IsoTime | None = Field(None, description="When it happened/happens (default: now).")


@SPEC.action("log_activity", LogArgs, "Log an activity (note, call, meeting, email, task) on an account.")
def log_activity(store: Store, a: LogArgs) -> dict:
    store.get("accounts", a.account_id, "account")
    data = a.model_dump()
    data["date"] = data["date"] or store.now()
    return {"activity": store.insert("activities", data)}
