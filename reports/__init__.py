"""Allure results, the HTML report, plots and findings."""
