"""sparkstation inference core: protocol, server, client, engine, backends, edits, workspace, detectors."""
