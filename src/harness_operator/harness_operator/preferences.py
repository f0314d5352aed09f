"""The operator's preferences ("prefer this executor for that skill"), as the journal keeps them:
one set for a policy is verified only while the policy's catalogue version is the one it was
set for, and only a verified one is followed."""

from __future__ import annotations


def verified_preferences(
    preferences: dict[str, dict], policies: tuple[str, ...], versions: dict[str, int]
) -> list[dict]:
    """Every preference (`preferences`: the journal's, by skill) with whether it is verified:
    one set for a policy whose catalogue version has changed since, or that is not in the
    catalogue now, is unverified (and says why) until it is set again."""
    out = []
    for skill, p in preferences.items():
        if p['executor'] == 'auto':
            continue
        policy = p['executor'].split(':', 1)[1] if p['executor'].startswith('policy:') else ''
        now = versions.get(policy) if policy else None
        verified = not policy or (policy in policies and now == p['policy_version'])
        entry = {'skill': skill, 'executor': p['executor'], 'verified': verified}
        if policy:
            entry['policy_version'] = p['policy_version']
        if not verified:
            entry['why'] = (
                f'{policy} is version {now} now, it was set for version '
                f'{p["policy_version"]}: prefer it again to verify it'
                if policy in policies
                else f'{policy} is not in the catalogue now'
            )
        out.append(entry)
    return out


def preferred_executor(preferences: list[dict], skill: str) -> str:
    """The executor 'auto' means for `skill`: the verified preference's, else the skill."""
    preferred = next((p for p in preferences if p['skill'] == skill and p['verified']), None)
    return preferred['executor'] if preferred else 'skill'
