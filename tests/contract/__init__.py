"""What the documents promise (errors, limits, SDK compatibility), tested as written."""
