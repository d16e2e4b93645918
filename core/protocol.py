"""Protocol v1 between the app and the inference core: JSON text frames over one websocket.

Placeholder module header; the core issue owns and completes this file.
"""
PROTOCOL_VERSION = 1
