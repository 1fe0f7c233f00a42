"""Memory domains: memory nodes in isolated domains, typed weighted edges and traversal."""
