"""The project notebook: projects, visited pages, findings, related pages and next steps."""
