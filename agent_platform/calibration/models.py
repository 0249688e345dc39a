"""The stored estimate correction of a model (SPEC 4). The table kept its name when the model moved
here from ``compression`` (a state-only migration)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class TokenCalibration(models.Model):
    """A model's estimate correction, learned from the prompt tokens its provider reports (SPEC 4):
    ``factor`` x our estimate under ``profile`` is what the model is expected to count. One row per
    endpoint, model name (as the known-models table reads it) and profile
    (``selectors.calibration_key``); written only by reported usage."""

    endpoint_key = models.CharField(_("endpoint"), max_length=500, blank=True, default="")
    model_key = models.CharField(_("model"), max_length=200)
    profile = models.CharField(_("estimator profile"), max_length=50)
    factor = models.FloatField(_("correction factor"), default=1.0)
    observations = models.PositiveIntegerField(_("reports observed"), default=0)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        db_table = "compression_tokencalibration"
        verbose_name = _("token calibration")
        verbose_name_plural = _("token calibrations")
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint_key", "model_key", "profile"],
                name="tokencalibration_endpoint_model_profile",
            )
        ]

    def __str__(self) -> str:
        where = f"{self.model_key} at {self.endpoint_key}" if self.endpoint_key else self.model_key
        return f"{where} ({self.profile}): x{self.factor:.3f} from {self.observations}"
