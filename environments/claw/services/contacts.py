"""The ``contacts`` mock service: an address book (search, get, create, update)."""

from __future__ import annotations

from pydantic import Field

from environments.claw.core import Args, ClawError, Collection, Email, ServiceSpec, Store, bad_request, joined, rank

SPEC = ServiceSpec(
    "contacts",
    "An address book: look people up by name, email or company; add and edit contacts.",
    {
        "contacts": Collection(
            prefix="c",
            defaults={"name": "", "email": "", "phone": "", "company": "", "title": "", "notes": ""},
            required=("name",),
        )
    },
)


class SearchArgs(Args):
    query: str = Field(description="Name, email, company or any keyword.", min_length=1)
    limit: int = Field(20, ge=1, le=100, description="Maximum number of results.")


@SPEC.action("search", SearchArgs, "Find contacts matching a name, email, company or keyword.")
def search(store: Store, a: SearchArgs) -> dict:
    found = rank(a.query, store.items("contacts"), lambda c: joined(c, "name", "email", "phone", "company", "title", "notes"))
    return {"contacts": [dict(c) for c in found[: a.limit]]}


SPEC.get_action("get", collection="contacts", kind="contact", id_description="Contact id.",
                description="Get one contact by id.")


class CreateArgs(Args):
    name: str = Field(description="Full name.", min_length=1)
    email: Email = Field(description="Email address.")
    phone: str = Field("", description="Phone number.")
    company: str = Field("", description="Company.")
    title: str = Field("", description="Job title.")
    notes: str = Field("", description="Free-text notes.")


@SPEC.action("create", CreateArgs, "Add a contact (emails must be unique).")
def create(store: Store, a: CreateArgs) -> dict:
    for c in store.items("contacts"):
        if str(c.get("email", "")).lower() == a.email.lower():
            raise ClawError(409, "conflict", f"a contact with email {a.email!r} exists (id {c['id']})",
                            "use contacts_update to change it")
    return {"contact": store.insert("contacts", a.model_dump())}


class UpdateArgs(Args):
    id: str = Field(description="Contact id.")
    name: str | None = Field(None, description="New name.")
    email: Email | None = Field(None, description="New email.")
    phone: str | None = Field(None, description="New phone.")
    company: str | None = Field(None, description="New company.")
    title: str | None = Field(None, description="New job title.")
    notes: str | None = Field(None, description="Replace the notes.")


@SPEC.action("update", UpdateArgs, "Change fields of a contact (only the given ones).")
def update(store: Store, a: UpdateArgs) -> dict:
    store.get("contacts", a.id, "contact")
    patch = a.model_dump(exclude={"id"}, exclude_none=True)
    if not patch:
        raise bad_request("contacts_update: give at least one field to change")
    return {"contact": store.update("contacts", a.id, patch)}
