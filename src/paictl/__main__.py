from paictl.cli.entry import main

main()
