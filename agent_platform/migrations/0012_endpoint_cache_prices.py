from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agent_platform', '0011_agent_starters'),
    ]

    operations = [
        migrations.AddField(
            model_name='modelendpoint',
            name='cached_input_price_per_million',
            field=models.DecimalField(blank=True, decimal_places=4, help_text='What the provider charges for a million prompt tokens read from its prompt cache. Empty: the input price.', max_digits=12, null=True, verbose_name='cached input price per million tokens'),
        ),
        migrations.AddField(
            model_name='modelendpoint',
            name='cache_write_price_per_million',
            field=models.DecimalField(blank=True, decimal_places=4, help_text='What the provider charges for a million prompt tokens written to its prompt cache (Anthropic). Empty: the input price.', max_digits=12, null=True, verbose_name='cache write price per million tokens'),
        ),
    ]
