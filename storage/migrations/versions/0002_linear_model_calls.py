"""linear model_calls: a call stored against an earlier call of its rollout

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 14:00:00

Two nullable columns; every existing row keeps ``base_index`` NULL (stored in full) and
reads as before (storage/calls.py).
"""
import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('model_calls', schema=None) as batch_op:
        batch_op.add_column(sa.Column('base_index', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('delta', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('model_calls', schema=None) as batch_op:
        batch_op.drop_column('delta')
        batch_op.drop_column('base_index')
