"""TokenCalibration now belongs to ``agent_platform`` (its 0006 took the same table): state only."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("compression", "0007_compression_outcome"),
        ("agent_platform", "0006_token_calibration_moved_here"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="TokenCalibration")],
            database_operations=[],
        ),
    ]
