"""keyring's "no backend" class, which paictl treats as no keyring."""


class Keyring:
    pass
