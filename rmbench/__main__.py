from rmbench.cli import main

main()
