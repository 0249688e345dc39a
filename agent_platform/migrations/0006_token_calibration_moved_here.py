"""TokenCalibration moves from ``compression`` to ``agent_platform``: state only, the table
(``compression_tokencalibration``) and its rows stay as they are."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agent_platform", "0005_verbose_names_translated"),
        ("compression", "0007_compression_outcome"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="TokenCalibration",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("model_key", models.CharField(max_length=200, verbose_name="model")),
                        ("profile", models.CharField(max_length=50, verbose_name="estimator profile")),
                        ("factor", models.FloatField(default=1.0, verbose_name="correction factor")),
                        ("observations", models.PositiveIntegerField(default=0, verbose_name="reports observed")),
                        ("updated_at", models.DateTimeField(auto_now=True, verbose_name="updated")),
                    ],
                    options={
                        "verbose_name": "token calibration",
                        "verbose_name_plural": "token calibrations",
                        "db_table": "compression_tokencalibration",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("model_key", "profile"), name="tokencalibration_model_profile"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
