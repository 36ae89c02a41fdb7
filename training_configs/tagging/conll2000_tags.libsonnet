// The tag inventory of CoNLL-2000 chunking in BIOUL: O and B/I/L/U of its 11 chunk types. The
// chunkers' label vocabulary is this list, not what some file happens to contain: train.txt
// lacks B-LST / L-LST (test.txt has them) and test.txt lacks INTJ, PRT and UCP spans, and no
// config may read the test file to learn its tags.
local types = ['ADJP', 'ADVP', 'CONJP', 'INTJ', 'LST', 'NP', 'PP', 'PRT', 'SBAR', 'UCP', 'VP'];
['O'] + [prefix + '-' + type for type in types for prefix in ['B', 'I', 'L', 'U']]
