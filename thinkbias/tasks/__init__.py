"""thinkbias.tasks: the decision tasks more than one study asks a model, defined once.

templates  the tabular datasets (Adult, COMPAS, Credit): protected attributes, Yes/No questions,
           the fixed profile templates and their counterfactual twins
records    the records a task samples: the paper's column choices, the label column, the seeded sample

The fairness study builds its counterfactual prompts from them; blindspot audits the same records
as decision tasks. Below the studies: imports only ``thinkbias.data``.
"""
