"""The full stack on one machine, for the end-to-end test and for looking around.

Airflow 3's four components on a private PostgreSQL (:mod:`.stack`,
:mod:`.postgres`), a REST client (:mod:`.rest`), headless Chromium driven by
Selenium through Debian's ChromeDriver (:mod:`.browser`) and pixel statistics
(Pillow) that tell a rendered page from a blank one (:mod:`.png`).  Debian
packages (postgresql, chromium) are installed on first use (:mod:`.packages`).
Nothing here is imported by DAGs or tasks.
"""
