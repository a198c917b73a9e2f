"""Pure domain rules: enums, models, the generator graph contract. No IO lives here."""
