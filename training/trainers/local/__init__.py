"""The local trainer: GRPO and SFT in plain torch on one device (CPU or one GPU)."""

from training.trainers.local.trainer import LocalTrainer, sft_train_config

__all__ = ["LocalTrainer", "sft_train_config"]
