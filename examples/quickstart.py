"""Audit a scikit-learn model trained outside privaudit, in about ten lines.

    python examples/quickstart.py      # writes quickstart-report/ in the working directory

The model is trained here, without privaudit; ``privaudit.audit_model`` trains the
attacker's reference models with a clone of it (the same recipe), runs the attacks of
``privaudit run`` and returns the figures; ``result.save`` writes what the command line
writes (check it with ``privaudit verify quickstart-report``).
"""

import numpy as np
from sklearn.datasets import load_digits
from sklearn.neural_network import MLPClassifier

import privaudit

X, y = load_digits(return_X_y=True)
role = np.random.default_rng(0).integers(3, size=len(y))  # each record's own fair draw:
members, non_members = np.flatnonzero(role == 0), np.flatnonzero(role == 1)  # 2: population
model = MLPClassifier((64,), max_iter=400, random_state=0).fit(X[members], y[members])

result = privaudit.audit_model(model, X, y, members=members, non_members=non_members,
                               attacks=["population", "lira-online", "rmia-online"], seed=0,
                               randomised_split=True)  # audited: a fair coin each
print(result)
best = result.strongest_attack()
print(f"strongest attack: {best.name}, AUC {best.auc:.3f}, TPR at 1% FPR {best.tpr(0.01):.1%}")
result.save("quickstart-report", overwrite=True)
