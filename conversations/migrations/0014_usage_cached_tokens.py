from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0013_thread_sidebar_marks'),
    ]

    operations = [
        migrations.AddField(
            model_name='usagerecord',
            name='cache_read_tokens',
            field=models.PositiveIntegerField(default=0, verbose_name='cached input tokens'),
        ),
        migrations.AddField(
            model_name='usagerecord',
            name='cache_write_tokens',
            field=models.PositiveIntegerField(default=0, verbose_name='cache write tokens'),
        ),
    ]
