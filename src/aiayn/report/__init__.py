"""The paper's tables (:mod:`aiayn.report.tables`) and plots (:mod:`aiayn.report.plots`) from the metric files."""
