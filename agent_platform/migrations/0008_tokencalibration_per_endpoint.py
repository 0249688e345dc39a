"""The stored calibration is keyed per endpoint and model (issue 24); the per-model rows are dropped."""

from django.db import migrations, models


def forget_per_model_rows(apps, schema_editor):
    """Rows learned per model name mixed every endpoint serving it (one misreporting proxy moved them
    all), so none can be credited to one endpoint: they are dropped, and each endpoint and model
    relearns its calibration from its next few reported calls."""
    apps.get_model("agent_platform", "TokenCalibration").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("agent_platform", "0007_agent_summary_must_contain"),
    ]

    operations = [
        migrations.RunPython(forget_per_model_rows, migrations.RunPython.noop),
        migrations.RemoveConstraint(
            model_name="tokencalibration",
            name="tokencalibration_model_profile",
        ),
        migrations.AddField(
            model_name="tokencalibration",
            name="endpoint_key",
            field=models.CharField(blank=True, default="", max_length=500, verbose_name="endpoint"),
        ),
        migrations.AddConstraint(
            model_name="tokencalibration",
            constraint=models.UniqueConstraint(
                fields=("endpoint_key", "model_key", "profile"),
                name="tokencalibration_endpoint_model_profile",
            ),
        ),
    ]
