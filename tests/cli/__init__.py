"""The agui-wire command line."""
