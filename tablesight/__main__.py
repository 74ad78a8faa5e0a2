from tablesight.cli import main

raise SystemExit(main())
