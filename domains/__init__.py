"""Domain verifiers (``verifiers.domains``): ``code``, ``finance``, ``mesh``, ``render``.

Each subpackage registers its verifiers when imported; the registry imports them lazily on the
first lookup of a name in their namespace, so nothing here is imported eagerly.
"""

__all__: list[str] = []
