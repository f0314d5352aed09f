from harness_recording.report_card import markdown, report_card


def episode(task, start, end, success=True):
    def v(verdict, t1, t2, truth):
        return {'verdict': verdict, 'tiers': {'1': t1, '2': t2}, 'ground_truth': truth}

    return {
        'task': task,
        'goal_verdicts': {'start': v(*start, False), 'end': v(*end, success)},
    }


def test_verdicts_are_counted_against_the_ground_truth_per_tier():
    card = report_card(
        [
            episode(
                'lift',
                ('violated', 'violated', 'violated'),
                ('satisfied', 'satisfied', 'satisfied'),
            ),
            # tier 2 is fooled at the start; tier 1 cannot tell at the end
            episode(
                'lift', ('ambiguous', 'violated', 'satisfied'), ('satisfied', None, 'satisfied')
            ),
            # the episode failed but tier 2 says satisfied
            episode(
                'lift', ('violated', None, 'violated'), ('satisfied', None, 'satisfied'), False
            ),
        ]
    )
    t2 = card['tasks']['lift']['2']
    assert t2 == {
        'judged': 6,
        'true_pos': 2,
        'true_neg': 2,
        'false_pos': 2,
        'false_neg': 0,
        'abstained': 0,
    }
    t1 = card['tasks']['lift']['1']
    assert (t1['true_neg'], t1['true_pos'], t1['abstained']) == (2, 1, 3)
    assert card['total']['combined']['abstained'] == 1
    text = markdown(card)
    assert '| lift | 2 (perception) | 6 | 2 | 2 | 2 | 0 | 0 | 0.50 | 0.00 |' in text
    assert 'not judged' in text


def test_episodes_without_ground_truth_or_verdicts_count_nothing():
    card = report_card(
        [{'task': 'x'}, {'task': 'x', 'goal_verdicts': {'end': {'verdict': 'satisfied'}}}]
    )
    assert card['total']['combined']['judged'] == 0


def test_tier_3_counts_only_for_the_tasks_a_card_judged_at_tier_3(tmp_path):
    import json

    from harness_recording.report_card import tier3_tasks

    card = {
        'tasks': {
            'lift_cube': {'3': {'judged': 4, 'abstained': 1}},
            'press_button': {'3': {'judged': 2, 'abstained': 2}},  # it never answered
            'place_in_bowl': {'2': {'judged': 4, 'abstained': 0}},
        }
    }
    path = tmp_path / 'report_card.json'
    path.write_text(json.dumps(card))
    assert tier3_tasks(str(path)) == {'lift_cube'}
    assert tier3_tasks('') == set() and tier3_tasks(str(tmp_path / 'none.json')) == set()
    path.write_text('[1]')
    assert tier3_tasks(str(path)) == set()
