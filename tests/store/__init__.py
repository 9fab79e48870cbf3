"""The event log's backends (agui.store), against one shared behaviour suite."""
